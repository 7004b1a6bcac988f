module github.com/pincerbot/pincer

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/titanous/json5 v1.0.0
)

require golang.org/x/text v0.44.0 // indirect
