// The quickstart (examples/quickstart/__main__.py) in Go: the operator and one Ray
// cluster, through the SDK generated from components/schema.json.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"pulumi-ray.local/sdk/go/ray"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		operatorArgs := &ray.RayOperatorArgs{}
		// Unset, the component picks its default image; "" would be an image name.
		if image, err := config.Try(ctx, "operatorImage"); err == nil {
			operatorArgs.Image = pulumi.String(image)
		}
		operator, err := ray.NewRayOperator(ctx, "ray-operator", operatorArgs)
		if err != nil {
			return err
		}

		// The spec is a KubeRay RayClusterSpec in camelCase, checked by the provider at run
		// time (the schema carries it as a map, so the compiler checks the fields around it).
		template := pulumi.Map{"spec": pulumi.Map{"containers": pulumi.Array{pulumi.Map{
			"name": pulumi.String("ray"), "image": pulumi.String("rayproject/ray:2.52.1"),
		}}}}
		cluster, err := ray.NewRayCluster(ctx, "demo", &ray.RayClusterArgs{
			Namespace: pulumi.String("default"),
			Spec: pulumi.Map{
				"rayVersion":    pulumi.String("2.52.1"),
				"headGroupSpec": pulumi.Map{"template": template},
				"workerGroupSpecs": pulumi.Array{pulumi.Map{
					"groupName":   pulumi.String("cpu"),
					"replicas":    pulumi.Int(2),
					"minReplicas": pulumi.Int(0),
					"maxReplicas": pulumi.Int(4),
					"template":    template,
				}},
			},
		}, pulumi.DependsOn([]pulumi.Resource{operator}))
		if err != nil {
			return err
		}

		ctx.Export("dashboard", cluster.DashboardUrl)
		// The RayCluster's status is typed (RayClusterStatusOutput): a checked accessor.
		ctx.Export("state", cluster.Status.State())
		return nil
	})
}
