//go:build !race

package rest_test

const raceDetector = false
