// Package archtest holds tests of pincer's package structure: the inner
// packages stay free of SDKs and drivers, so they can be tested and reused
// without them.
package archtest
