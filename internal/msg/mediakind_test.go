package msg

import "testing"

func TestMediaKindOf(t *testing.T) {
	for ref, want := range map[string]MediaKind{
		"/ws/a.PNG":                      MediaImage,
		"/ws/a.heic":                     MediaImage,
		"https://x.test/p/a.jpg?sig=abc": MediaImage,
		"file:///tmp/v.silk":             MediaAudio,
		"/ws/song.mp3":                   MediaAudio,
		"/ws/clip.mp4":                   MediaVideo,
		"/ws/report.pdf":                 MediaFile,
		"/ws/noext":                      MediaFile,
		"https://x.test/a.png/view":      MediaFile,
	} {
		if got := MediaKindOf(ref); got != want {
			t.Errorf("MediaKindOf(%q) = %s, want %s", ref, got, want)
		}
	}
}
