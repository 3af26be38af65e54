//go:build tools

// Wrapper module: pins syft, the SBOM and package-detection tool whose catalogers the
// image test runs over the OCI layout (hack/image/scan.py).
package tools

import _ "github.com/anchore/syft/cmd/syft"
