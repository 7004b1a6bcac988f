package msg

// Attachment is one piece of inbound media a turn may look at: an image,
// a voice note, a video or a file of a message the turn answers, of the
// message it quotes, or of a merged forward it expands. Channels fetch it
// by Segment's URL and ID (see channel.Downloader).
type Attachment struct {
	// Channel and Account are the channel account that received it.
	Channel ChannelID `json:",omitzero"`
	Account AccountID `json:",omitzero"`
	// Peer is the chat it was seen in.
	Peer Peer `json:",omitzero"`
	// Message is the message that carries it (a forward's child, not the
	// forward, for media inside a forward).
	Message MessageID `json:",omitzero"`
	// Segment is the media segment: its Kind, URL, ID and Name.
	Segment Segment
	// From says where the turn found it: AttachedHere, AttachedQuote or
	// AttachedForward.
	From string `json:",omitzero"`
}

// Where an attachment was found.
const (
	AttachedHere    = "message"
	AttachedQuote   = "quote"
	AttachedForward = "forward"
)

// IsMedia reports whether a segment kind is downloadable media.
func IsMedia(k SegmentKind) bool {
	switch k {
	case SegImage, SegVoice, SegVideo, SegFile:
		return true
	}
	return false
}

// Attachments returns the media of m, in order, found where from says.
func (m *Message) Attachments(from string) []Attachment {
	var out []Attachment
	for _, s := range m.Segments {
		if IsMedia(s.Kind) {
			out = append(out, Attachment{Channel: m.Channel, Account: m.Account, Peer: m.Peer, Message: m.ID, Segment: s, From: from})
		}
	}
	return out
}
