package backup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Keys of the CoreOS awsSecret: two files in the AWS shared-file format.
const (
	AWSCredentialsKey = "credentials"
	AWSConfigKey      = "config"
)

// AWSCredentials are what the awsSecret holds for the default profile. Its String method
// never prints the secret.
type AWSCredentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Region          string // from config; empty: the store's default
}

func (c AWSCredentials) String() string {
	return fmt.Sprintf("AWSCredentials{AccessKeyID:%q, Region:%q, secret:<redacted>}", c.AccessKeyID, c.Region)
}

// GoString keeps %#v from printing the secret either.
func (c AWSCredentials) GoString() string { return c.String() }

// ParseAWSSecret reads the default profile from the data of an awsSecret: the file
// "credentials" (aws_access_key_id, aws_secret_access_key, optional aws_session_token)
// and the optional file "config" (region). Errors name files and keys, never values.
func ParseAWSSecret(data map[string][]byte) (AWSCredentials, error) {
	credFile, ok := data[AWSCredentialsKey]
	if !ok || len(bytes.TrimSpace(credFile)) == 0 {
		return AWSCredentials{}, fmt.Errorf("the secret has no file %q (AWS shared credentials format)", AWSCredentialsKey)
	}
	creds, err := parseINI(credFile)
	if err != nil {
		return AWSCredentials{}, fmt.Errorf("file %q: %w", AWSCredentialsKey, err)
	}
	def, ok := creds["default"]
	if !ok {
		return AWSCredentials{}, fmt.Errorf("file %q has no [default] profile", AWSCredentialsKey)
	}
	c := AWSCredentials{
		AccessKeyID:     def["aws_access_key_id"],
		SecretAccessKey: def["aws_secret_access_key"],
		SessionToken:    def["aws_session_token"],
	}
	var missing []string
	if c.AccessKeyID == "" {
		missing = append(missing, "aws_access_key_id")
	}
	if c.SecretAccessKey == "" {
		missing = append(missing, "aws_secret_access_key")
	}
	if len(missing) > 0 {
		return AWSCredentials{}, fmt.Errorf("file %q, profile default: missing %s", AWSCredentialsKey, strings.Join(missing, " and "))
	}
	if cfgFile, ok := data[AWSConfigKey]; ok {
		cfg, err := parseINI(cfgFile)
		if err != nil {
			return AWSCredentials{}, fmt.Errorf("file %q: %w", AWSConfigKey, err)
		}
		// The config file names the default profile [default]; tools also accept
		// [profile default].
		for _, sec := range []string{"default", "profile default"} {
			if r := cfg[sec]["region"]; r != "" {
				c.Region = r
				break
			}
		}
	}
	return c, nil
}

// parseINI parses the subset of INI the AWS files use: [section] lines, key = value
// lines, comments starting with # or ;. Indented lines (nested settings such as s3 =
// ...) are skipped.
func parseINI(b []byte) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("line %d: malformed section header", n)
			}
			name := strings.TrimSpace(line[1 : len(line)-1])
			if out[name] == nil {
				out[name] = map[string]string{}
			}
			cur = out[name]
		case raw[0] == ' ' || raw[0] == '\t':
			continue
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: expected key = value", n)
			}
			if cur == nil {
				return nil, fmt.Errorf("line %d: setting outside a [section]", n)
			}
			cur[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no [section] found")
	}
	return out, nil
}
