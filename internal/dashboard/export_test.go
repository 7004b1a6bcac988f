package dashboard

import (
	"io/fs"

	"github.com/pincerbot/pincer/internal/texts"
)

// Assets are the page's files, for the tests.
func Assets() fs.FS {
	sub, _ := fs.Sub(assets, "assets") // the directory is embedded
	return sub
}

// ScriptTexts are the texts the page hands its script.
func ScriptTexts() []texts.Key { return scriptTexts }
