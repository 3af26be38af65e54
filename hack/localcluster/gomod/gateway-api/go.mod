// Wrapper module: pins the Gateway API (the version KubeRay v1.7.0 builds against), whose
// standard-channel Gateway and HTTPRoute CRDs the RayService incremental-upgrade tests
// install. Nothing is built from it: only the module's config/crd/standard/ is read.
module pulumi-ray.local/localcluster/gateway-api

go 1.24.0

require sigs.k8s.io/gateway-api v1.4.1
