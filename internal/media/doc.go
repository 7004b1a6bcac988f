// Package media is media understanding for agent turns: download, stage,
// describe, transcribe, preview links.
//
// An Understander takes the attachments and text of one turn and, within
// the turn's deadline, downloads images and voice notes (through the
// channel's Downloader or a guarded Fetcher), stages them content-addressed
// in the chat's workspace, hands images to models that see them, describes
// them for models that do not (Describer), transcribes voice notes
// (Transcriber) and previews the links of the text. What it learns comes
// back as notes the engine appends to the user's message.
//
// Every URL this package fetches itself goes through a Fetcher, which
// refuses loopback, private, link-local and other non-public addresses at
// connect time, so neither a redirect nor DNS rebinding reaches the host's
// network or a cloud metadata service.
package media
