//go:build race

package main

// raceEnabled: the tests are built with the race detector, and so is the
// pincer binary they run.
const raceEnabled = true
