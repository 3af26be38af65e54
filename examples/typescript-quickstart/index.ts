// The quickstart (examples/quickstart/__main__.py) in TypeScript: the operator and one
// Ray cluster, through the SDK generated from components/schema.json.
import * as pulumi from "@pulumi/pulumi";
import * as ray from "@pulumi-ray/ray";

const rayContainer = { name: "ray", image: "rayproject/ray:2.52.1" };

const operator = new ray.RayOperator("ray-operator", {
    image: new pulumi.Config().get("operatorImage"),
});

const cluster = new ray.RayCluster(
    "demo",
    {
        namespace: "default",
        // The spec is a KubeRay RayClusterSpec in camelCase, checked by the provider at
        // run time (the schema carries it as a map, so tsc checks the fields around it).
        spec: {
            rayVersion: "2.52.1",
            headGroupSpec: { template: { spec: { containers: [rayContainer] } } },
            workerGroupSpecs: [
                {
                    groupName: "cpu",
                    replicas: 2,
                    minReplicas: 0,
                    maxReplicas: 4,
                    template: { spec: { containers: [rayContainer] } },
                },
            ],
        },
    },
    { dependsOn: [operator] },
);

export const dashboard = cluster.dashboardUrl;
// The RayCluster's status is typed (RayClusterStatus): no cast, and tsc checks the name.
export const state = cluster.status.state;
