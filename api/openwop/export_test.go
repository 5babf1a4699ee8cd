package openwop

// ApplyAttempts exposes applyAttempts to the package's external tests.
const ApplyAttempts = applyAttempts
