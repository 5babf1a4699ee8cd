package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Realistic tokens of each kind (made up: none is a live credential).
var (
	exOpenAI       = "sk-" + "T3BlbkFJ4xQ9vZr2LmN8pK7wY1sD5fGhJ3kL6qW0eR9tY2uI"
	exOpenAIProj   = "sk-proj-" + "Xy7_Ab3dE-fG9hIjK2lMnO4pQrS6tUvW8xYz0AbCdEfGhIjKlMnOpQrStUvWx1y2z3"
	exAnthropic    = "sk-ant-api03-" + "Zq3_xY8-kLmN2pQrS4tUvW6xYz8AbCdE0fGhIj2KlMnO4pQrS6tUvW8xYz0aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789-AA"
	exAWS          = "AKIAIOSFODNN7EXAMPLE"
	exAWSSession   = "ASIAY34FZKBOKMUTVV7A"
	exGitHub       = "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a"
	exGitHubServer = "ghs_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
	exGitHubPAT    = "github_pat_" + "11ABCDEFG0123456789abc_" + "DefGhiJklMnoPqrStuVwxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz0123"
	exSlack        = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	exJWT          = b64(`{"alg":"HS256","typ":"JWT"}`) + "." + b64(`{"sub":"1234567890","name":"Jo"}`) + "." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	exJWTNone      = b64(`{"alg":"none"}`) + "." + b64(`{"sub":"x"}`) + "."
	exPEM          = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yQ9rY7N0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I=\n-----END RSA PRIVATE KEY-----"
	exPEMPKCS8     = "-----BEGIN PRIVATE KEY-----\r\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\r\n-----END PRIVATE KEY-----"
	exPEMEncrypted = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n-----END RSA PRIVATE KEY-----"
	exOpenSSH      = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestEachKindIsRedactedInContext(t *testing.T) {
	cases := []struct {
		name, token, kind string
	}{
		{"an OpenAI legacy key", exOpenAI, KindOpenAIAPIKey},
		{"an OpenAI project key", exOpenAIProj, KindOpenAIAPIKey},
		{"an Anthropic key", exAnthropic, KindAnthropicAPIKey},
		{"an AWS access key id", exAWS, KindAWSAccessKeyID},
		{"an AWS session key id", exAWSSession, KindAWSAccessKeyID},
		{"a GitHub personal token", exGitHub, KindGitHubToken},
		{"a GitHub server token", exGitHubServer, KindGitHubToken},
		{"a GitHub fine-grained token", exGitHubPAT, KindGitHubToken},
		{"a Slack bot token", exSlack, KindSlackToken},
		{"a JWT", exJWT, KindJWT},
		{"an unsigned JWT", exJWTNone, KindJWT},
		{"a PKCS#1 private key", exPEM, KindPrivateKey},
		{"a PKCS#8 private key with CRLF", exPEMPKCS8, KindPrivateKey},
		{"an encrypted private key with headers", exPEMEncrypted, KindPrivateKey},
		{"an OpenSSH private key", exOpenSSH, KindPrivateKey},
	}
	// Surroundings a token appears in: prose, assignments, JSON, YAML lists, quotes,
	// the end of a sentence, the start and the end of the body.
	contexts := []struct{ before, after string }{
		{"", ""},
		{"the key is ", " here"},
		{"OPENAI_API_KEY=", "\n"},
		{`{"token":"`, `"}`},
		{"keys: [", "]"},
		{"'", "'"},
		{"see ", "."},
		{"Authorization: Bearer ", "\r\n"},
	}
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		for _, ctx := range contexts {
			in := ctx.before + c.token + ctx.after
			want := ctx.before + "[REDACTED:" + c.kind + "]" + ctx.after
			if got := r.Redact("a", in); got != want {
				t.Errorf("%s in %q…%q: got %q, want %q", c.name, ctx.before, ctx.after, got, want)
			}
		}
	}
}

func TestNearMissesAreNotRedacted(t *testing.T) {
	uuid := "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	for _, in := range []string{
		// sk-: too short, not mixed (kebab-case names), inside a word.
		"sk-" + "Ab1cD2eF3gH4iJ5kL6m"[:19],
		"sk-learn-pipeline-configuration-v2",
		"sk-abcdefghijklmnopqrstuvwxyz",
		"task-" + exOpenAI[3:],
		"disk-" + "AbCdEfGh12345678IjKlMn",
		"x" + exOpenAI,
		// AWS: 15 or 17 characters, lower case, inside a word, another prefix.
		"AKIAIOSFODNN7EXAMPL",
		"AKIAIOSFODNN7EXAMPLEX",
		"AKIAiosfodnn7example",
		"XAKIAIOSFODNN7EXAMPLE",
		"AKIBIOSFODNN7EXAMPLE",
		// GitHub: short, unknown letter, inside a word, an underscore in a classic body.
		"ghp_16C7e42F292c6912E7710c838347Ae178B4",
		"ghx_16C7e42F292c6912E7710c838347Ae178B4a",
		"laughp_16C7e42F292c6912E7710c838347Ae178B4a",
		"ghp_16C7e42F292c6912E7710c83_8347Ae178B4a",
		"github_pat_short1",
		// Slack: unknown letter, short, no digit.
		"xoxq-123456789012-1234567890123-AbCdEf",
		"xoxb-12345",
		"xoxb-abcdefghijklmnop",
		// JWT: the header is not JSON, two parts, four parts, inside a dotted name.
		"eyJub3QganNvbg.eyJzdWIiOiIxIn0.abc",
		b64(`{"alg":"HS256"}`) + "." + b64(`{"sub":"1"}`),
		exJWT + ".more",
		"a." + exJWT,
		// PEM: public keys, certificates, no END, mismatched labels, a foreign byte.
		"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END EC PRIVATE KEY-----",
		"-----BEGIN RSA PRIVATE KEY-----\nMII*Eow\n-----END RSA PRIVATE KEY-----",
		// Ordinary identifiers.
		uuid,
		strings.ToUpper(uuid),
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"commit 4e73b8f0c1d2e3f405162738495a6b7c8d9e0f1a",
		"WCT1-BLACKBOX-SECRET-" + uuid,
		"SGVsbG8sIHdvcmxkISBUaGlzIGlzIGJhc2U2NCBhbmQgbm90IGEgSldULg==",
		"[REDACTED:not-a-marker-name] and [REDACTED:jwt]",
	} {
		if got := (*Redactor)(nil).Redact("a", in); got != in {
			t.Errorf("%q was redacted: %q", in, got)
		}
	}
}

func TestAnIDWhoseMarkerLooksLikeATokenIsRefused(t *testing.T) {
	_, err := New(Config{Secrets: map[string][]Secret{"a": {{ID: "AKIAIOSFODNN7EXAMPLE", Value: "hunter2hunter2"}}}})
	if err == nil || !strings.Contains(err.Error(), "aws_access_key_id") {
		t.Fatalf("err = %v, want the id refused for looking like an AWS key", err)
	}
}

func TestKindMarkersHoldNoToken(t *testing.T) {
	for _, k := range Kinds {
		m := "[REDACTED:" + k + "]"
		if got := (*Redactor)(nil).Redact("a", m); got != m {
			t.Errorf("marker %q redacted to %q", m, got)
		}
	}
}
