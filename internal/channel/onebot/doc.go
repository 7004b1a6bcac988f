// Package onebot is pincer's QQ channel over OneBot v11 (SnowLuma, NapCat,
// LLOneBot, Lagrange, go-cqhttp). This part decodes what implementations
// send: lenient ids, segment arrays, CQ-code strings and message events,
// into pincer's msg model.
package onebot
