package config

import _ "embed"

// Example is a fully commented example configuration, printed by
// "pincer config example".
//
//go:embed example.json5
var Example []byte
