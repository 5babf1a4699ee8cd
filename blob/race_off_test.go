//go:build !race

package blob_test

const raceDetector = false
