package onebot

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/pincerbot/pincer/internal/channel"
	"github.com/pincerbot/pincer/internal/channel/onebot/wire"
	"github.com/pincerbot/pincer/internal/msg"
)

// ChannelID is the QQ channel's id.
const ChannelID = wire.ChannelID

// Channel is the QQ channel: every configured account, each with its own
// connections. Outbound payloads go to the account they name.
type Channel struct {
	accounts map[msg.AccountID]*Account
}

var _ channel.Adapter = (*Channel)(nil)

// NewChannel groups accounts; their ids must differ.
func NewChannel(accounts ...*Account) (*Channel, error) {
	c := &Channel{accounts: map[msg.AccountID]*Account{}}
	for _, a := range accounts {
		if _, dup := c.accounts[a.ID()]; dup {
			return nil, fmt.Errorf("onebot: two accounts named %q", a.ID())
		}
		c.accounts[a.ID()] = a
	}
	return c, nil
}

// Name implements channel.Adapter.
func (c *Channel) Name() msg.ChannelID { return ChannelID }

// Account returns the account with id.
func (c *Channel) Account(id msg.AccountID) (*Account, bool) {
	if id == "" {
		id = msg.DefaultAccount
	}
	a, ok := c.accounts[id]
	return a, ok
}

// Run runs every account until ctx ends.
func (c *Channel) Run(ctx context.Context, sink channel.Sink) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(c.accounts))
	for _, a := range c.accounts {
		wg.Go(func() {
			if err := a.Run(ctx, sink); err != nil {
				errs <- fmt.Errorf("account %s: %w", a.ID(), err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Send implements channel.Adapter through the account out names.
func (c *Channel) Send(ctx context.Context, out msg.Outbound) (msg.MessageID, error) {
	a, ok := c.Account(out.Account)
	if !ok {
		return "", fmt.Errorf("onebot: no account %q", out.Account)
	}
	return a.Send(ctx, out)
}

// SendOnce delivers out for an account that is not running (pincer send):
// over the HTTP API when it has one, else over a short-lived forward
// WebSocket.
func SendOnce(ctx context.Context, o AccountOptions, out msg.Outbound) (msg.MessageID, error) {
	ob := &chunkSender{ChunkLimit: o.ChunkLimit, ChunkGap: o.ChunkGap, Media: mediaOptions{Inline: o.InlineLocalMedia, InlineLimit: o.InlineMediaLimit, Log: o.Logger}}
	if o.Sent != nil {
		// A running gateway recognises replies to what was sent here.
		acct := cmp.Or(o.ID, msg.DefaultAccount)
		ob.OnSent = func(ctx context.Context, id msg.MessageID) {
			if err := o.Sent.RecordSent(context.WithoutCancel(ctx), ChannelID, acct, id); err != nil && o.Logger != nil {
				o.Logger.Warn("recording a sent message id", "msg_id", string(id), "err", err)
			}
		}
	}
	switch {
	case o.HTTPURL != "":
		ob.Caller = &httpCaller{BaseURL: o.HTTPURL, Token: o.Token, Timeout: o.RequestTimeout, Client: o.httpClient}
		return ob.Send(ctx, out, outboundOptions{})
	case o.WSURL != "":
		ws, err := DialForward(ctx, o.WSURL, o.Token, o.httpClient)
		if err != nil {
			return "", err
		}
		conn := NewConn(ws, o.RequestTimeout, o.Logger)
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = conn.Run(ctx, func([]byte, *wire.Event) {}) // events are not ours to handle here
		}()
		defer func() {
			_ = conn.close()
			cancel()
			<-done
		}()
		ob.Caller = conn
		return ob.Send(ctx, out, outboundOptions{})
	}
	return "", fmt.Errorf("onebot: account %s has no wsUrl or httpUrl to send through", o.ID)
}
