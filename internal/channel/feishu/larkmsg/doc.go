// Package larkmsg turns Feishu (Lark) IM messages into the text an agent
// reads. It decodes the items of the message GET and list APIs, renders
// every message type's content (text, post, cards, media placeholders
// that carry the message id, system messages and the rest), tells which
// users a message mentions, and expands a merged forward into a dated,
// named excerpt of its children, nested forwards included.
//
// The package does no I/O of its own beyond writing an overlong excerpt
// into the chat's workspace: the account that owns the Feishu client
// hands the Expander functions that fetch messages and resolve names.
package larkmsg
