// Wrapper module: pins KubeRay's own e2e test packages (ray-operator/test/...) at the
// version the side-by-side runs use, built with `go test -c` into test binaries that
// run against our operator and KubeRay's on the real node (hack/kuberay_e2e).
module pulumi-ray.local/kuberay-e2e

go 1.25.0

require github.com/ray-project/kuberay/ray-operator v1.6.2
