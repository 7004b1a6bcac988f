// Package wire is the OneBot v11 wire format as pincer reads and writes
// it: ids, message segments, CQ-code strings, events, forward nodes, and
// action requests and responses. It decodes what implementations
// (SnowLuma, NapCat, LLOneBot, Lagrange, go-cqhttp) send, leniently, into
// pincer's msg model, and encodes what pincer sends; it does no I/O.
package wire
