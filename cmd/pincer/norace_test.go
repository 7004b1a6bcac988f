//go:build !race

package main

// raceEnabled: the tests are built without the race detector, and so is
// the pincer binary they run.
const raceEnabled = false
