package ops

import (
	"github.com/cairnstore/cairn/api/s3"
)

// S3GatewayConfig configures the S3 gateway (api/s3; README "S3 gateway"), not to be
// confused with the S3 object store bodies may live in (--blob s3://, --s3-endpoint).
type S3GatewayConfig struct {
	// Listen is the listen address, host:port, of the S3 gateway; "" (the default) serves
	// none. Beyond loopback as --listen: TLS (the client listener's certificate) or
	// --insecure-plaintext. YAML s3_listen.
	Listen string
	// Region is the region S3 credentials are scoped to and buckets report. YAML
	// s3_gateway_region. Default s3.DefaultRegion ("us-east-1", what clients assume when told
	// none).
	Region string
}

// DefaultS3GatewayConfig returns the gateway's defaults: off.
func DefaultS3GatewayConfig() S3GatewayConfig { return S3GatewayConfig{Region: s3.DefaultRegion} }

// validateS3 checks the gateway's settings.
func (c Config) validateS3Gateway() []*ConfigError {
	var errs configErrors
	bad := errs.add
	if c.S3Gateway.Listen == "" {
		return errs
	}
	if rule := checkHostPort(c.S3Gateway.Listen); rule != "" {
		bad("S3Listen", rule, c.S3Gateway.Listen)
	} else if !c.TLS() && !c.InsecurePlaintext && !loopbackAddr(c.S3Gateway.Listen) {
		bad("S3Listen", "must be a loopback address (127.0.0.0/8, ::1 or localhost) unless TLS is configured (--tls-cert, --tls-key) or --insecure-plaintext is given", c.S3Gateway.Listen)
	}
	if c.S3Gateway.Listen == c.Listen || c.S3Gateway.Listen == c.AdminAddress() {
		bad("S3Listen", "must differ from --listen and --admin-listen (the gateway has a listener of its own)", c.S3Gateway.Listen)
	}
	if c.S3Gateway.Region == "" {
		bad("S3GatewayRegion", "must not be empty", "")
	}
	return errs
}

var s3GatewaySettings = []setting{
	stringSetting("S3Listen", "s3_listen", "listen address of the S3 gateway, host:port (default: none; beyond loopback as --listen)",
		func(c *Config) *string { return &c.S3Gateway.Listen }),
	stringSetting("S3GatewayRegion", "s3_gateway_region", "region the S3 gateway's credentials are scoped to and its buckets report",
		func(c *Config) *string { return &c.S3Gateway.Region }),
}
