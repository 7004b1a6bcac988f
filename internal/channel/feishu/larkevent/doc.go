// Package larkevent receives Feishu (Lark) events: it verifies, decrypts
// and decodes what the open platform pushes to a request URL ("send events
// to developer server", the webhook mode), and decodes the plaintext
// events the long connection hands over.
//
// Handler is the webhook endpoint. With an Encrypt Key it checks the
// X-Lark-Signature of every event over the raw body in constant time,
// rejects timestamps more than five minutes off, and decrypts the body
// (AES-256-CBC, key SHA-256 of the Encrypt Key, strict PKCS#7 padding).
// It checks the Verification Token of every event, not only of the URL
// verification challenge, answers the challenge itself, and hands each
// event to a Deliver function as an Envelope. Deliver is expected to
// enqueue and return: the open platform wants its answer within three
// seconds and pushes the event again after 15 s, 5 min, 1 h and 6 h when
// it does not get a 200, so Deliver returns ErrBusy to ask for that.
//
// DecodeEnvelope reads both event schemas (2.0 with a header, and the
// older v1 "event_callback"), DecodeMessageReceive and
// DecodeMessageRecalled the two message events pincer acts on, and
// ContentKey gives the content key that catches a message pushed again
// under a fresh message_id.
//
// The package uses the standard library only: the long-connection client
// of the Feishu SDK feeds DecodeEnvelope the plaintext JSON it receives.
package larkevent
