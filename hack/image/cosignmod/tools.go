//go:build tools

// Wrapper module: pins cosign (sigstore), which signs the operator image's index digest
// with the release's key and verifies it as a user would (hack/image/sign.py).
package tools

import _ "github.com/sigstore/cosign/v3/cmd/cosign"
