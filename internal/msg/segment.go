package msg

// SegmentKind is the kind of one piece of message content.
type SegmentKind string

// Segment kinds shared by all channels. A platform type with no kind of its
// own becomes SegOther with its platform type name kept in Segment.Type.
const (
	SegText    SegmentKind = "text"
	SegAt      SegmentKind = "at"
	SegReply   SegmentKind = "reply"
	SegImage   SegmentKind = "image"
	SegVoice   SegmentKind = "voice"
	SegFace    SegmentKind = "face"
	SegVideo   SegmentKind = "video"
	SegFile    SegmentKind = "file"
	SegForward SegmentKind = "forward"
	SegOther   SegmentKind = "other"
)

// Segment is one piece of message content. Only the fields that belong to
// its kind are set (and encoded: JSON leaves the others out).
type Segment struct {
	Kind SegmentKind `json:",omitzero"`
	// Text is the text of a SegText segment.
	Text string `json:",omitzero"`
	// Target is the mentioned user of a SegAt segment; AtAll marks @all.
	Target UserID `json:",omitzero"`
	AtAll  bool   `json:",omitzero"`
	// Name is the display name of a mention target or the file name of a
	// file, when the platform gave one.
	Name string `json:",omitzero"`
	// URL locates media (image, voice, video, file), when known.
	URL string `json:",omitzero"`
	// ID is the platform id the segment refers to: the quoted message of a
	// reply, the container of a forward, a face id, a file key.
	ID string `json:",omitzero"`
	// Type is the platform's own type name of a SegOther segment.
	Type string `json:",omitzero"`
	// Forward holds the messages of a SegForward container when the
	// platform sent them inline (nil when they must be fetched by ID).
	Forward []Message `json:",omitzero"`
}

// Text returns a text segment.
func Text(s string) Segment { return Segment{Kind: SegText, Text: s} }
