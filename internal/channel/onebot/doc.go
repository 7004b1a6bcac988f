// Package onebot is pincer's QQ channel over OneBot v11 (SnowLuma, NapCat,
// LLOneBot, Lagrange, go-cqhttp): accounts and their transports (forward
// and reverse WebSocket, HTTP API, HTTP POST), the ingest of events into
// messages, and delivery of replies. The wire format itself is package
// onebot/wire.
package onebot
