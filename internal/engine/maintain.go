package engine

import (
	"context"
	"time"
)

// PruneInterval is how often expired dedup keys are deleted.
const PruneInterval = 10 * time.Minute

// Run does the engine's periodic upkeep until ctx ends: it deletes expired
// dedup keys, and token counts older than limits.KeepDays, every
// PruneInterval.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			n, err := e.opts.Store.PruneDedup(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				e.log.Warn("prune dedup keys", "err", err)
				continue
			}
			if n > 0 {
				e.log.Debug("pruned dedup keys", "count", n)
			}
			if n, err := e.opts.Limits.Prune(ctx); err != nil {
				e.log.Warn("prune token counts", "err", err)
			} else if n > 0 {
				e.log.Debug("pruned token counts", "rows", n)
			}
		}
	}
}
