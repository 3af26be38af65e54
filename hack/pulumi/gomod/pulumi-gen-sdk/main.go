// Command pulumi-gen-sdk writes the Node.js (TypeScript) or Go SDK of a Pulumi package
// from its schema JSON, with the codegen packages of pkg/v3 that the language hosts call.
//
// Why not `pulumi package gen-sdk`: since 2024 the CLI hands SDK generation to the
// language host's GeneratePackage RPC, and the only language hosts the Go module proxy
// here serves are the 2023 ones that were still packages of sdk/v3 (Node.js v3.68.0, Go
// v3.66.0; see hack/pulumi/versions.py). They predate that RPC, so the CLI fails with
//
//	error: rpc error: code = Unimplemented desc = method GeneratePackage not implemented
//
// The newer hosts do little more than what this file does: bind the schema, call
// nodejs.GeneratePackage or gen.GeneratePackage (pkg/v3/codegen/go), write the files.
// Using pkg/v3 v3.274.1, the engine's own release, keeps the SDKs what that engine's
// hosts would generate.
//
//	pulumi-gen-sdk -language nodejs|go -out DIR SCHEMA.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"sort"

	"github.com/blang/semver"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// sdkModule is the Go SDK every generated Go SDK imports; its go.mod requires it at the
// version linked into this program, the one the generated code was written against.
const sdkModule = "github.com/pulumi/pulumi/sdk/v3"

// goDirective is sdk/v3 v3.274.1's own `go` line: a module requiring it needs at least this.
const goDirective = "1.26.6"

// tool is the name the generated files' "do not edit" header gives as their author.
const tool = "pulumi-gen-sdk"

// noDependencies is the schema loader for a package that references no other package.
// Ours refers to Kubernetes objects as plain maps (a spec is an "object"), so nothing
// has to be loaded; should the schema ever reference another package (say
// kubernetes:core/v1:...), generation fails here naming it rather than reaching for a
// plugin download this machine cannot make.
type noDependencies struct{}

var errDependency = errors.New("this generator loads no other package's schema; " +
	"the schema references one (its `dependencies` or a `$ref` to another package)")

func (noDependencies) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("package %q: %w", name, errDependency)
}

func (noDependencies) LoadPackageV2(
	_ context.Context, d *schema.PackageDescriptor,
) (*schema.Package, error) {
	return nil, fmt.Errorf("package %q: %w", d.Name, errDependency)
}

func (noDependencies) LoadPackageReference(
	name string, _ *semver.Version,
) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %q: %w", name, errDependency)
}

func (noDependencies) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return nil, fmt.Errorf("package %q: %w", d.Name, errDependency)
}

func bind(path string) (*schema.Package, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// BindSpec validates against the package metaschema too, as `pulumi package gen-sdk`
	// does; warnings are printed, errors stop generation.
	pkg, diags, err := schema.BindSpec(spec, noDependencies{}, schema.ValidationOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, d := range diags {
		fmt.Fprintf(os.Stderr, "%s: %s\n", path, d.Error())
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: the schema does not bind", path)
	}
	return pkg, nil
}

func generate(language string, pkg *schema.Package) (map[string][]byte, error) {
	switch language {
	case "nodejs":
		// localSDK=false: a package.json for publishing (compiled by `tsc`, its `build`
		// script), not the postinstall-compiling layout `pulumi package add` writes.
		return nodejs.GeneratePackage(tool, pkg, nil, nil, false, noDependencies{})
	case "go":
		files, err := gogen.GeneratePackage(tool, pkg, nil)
		if err != nil {
			return nil, err
		}
		goMod, err := goModule(pkg)
		if err != nil {
			return nil, err
		}
		files["go.mod"] = goMod
		return files, nil
	default:
		return nil, fmt.Errorf("unknown language %q (nodejs or go)", language)
	}
}

// goModule is a go.mod for the generated Go SDK, which GeneratePackage leaves to the
// publisher: the module is the import base path's parent (files are written as
// <package>/..., so the go.mod sits one level above the root package, as in
// gen.ModuleAndImportPath), and it needs only the Pulumi Go SDK.
func goModule(pkg *schema.Package) ([]byte, error) {
	info, ok := pkg.Language["go"].(gogen.GoPackageInfo)
	if !ok || info.ImportBasePath == "" {
		return nil, errors.New("the schema has no language.go.importBasePath")
	}
	build, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, errors.New("no build information to read the sdk/v3 version from")
	}
	for _, dep := range build.Deps {
		if dep.Path == sdkModule {
			return fmt.Appendf(nil, "module %s\n\ngo %s\n\nrequire %s %s\n",
				path.Dir(info.ImportBasePath), goDirective, sdkModule, dep.Version), nil
		}
	}
	return nil, fmt.Errorf("%s is not linked into this program", sdkModule)
}

func write(out string, files map[string][]byte) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		target := filepath.Join(out, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func run() error {
	language := flag.String("language", "", "nodejs or go")
	out := flag.String("out", "", "directory to write the SDK into (created; must be empty)")
	flag.Parse()
	if flag.NArg() != 1 || *language == "" || *out == "" {
		return errors.New("usage: pulumi-gen-sdk -language nodejs|go -out DIR SCHEMA.json")
	}
	if entries, err := os.ReadDir(*out); err == nil && len(entries) > 0 {
		// Stale files of an older schema would survive and still compile.
		return fmt.Errorf("%s is not empty", *out)
	}
	pkg, err := bind(flag.Arg(0))
	if err != nil {
		return err
	}
	files, err := generate(*language, pkg)
	if err != nil {
		return err
	}
	return write(*out, files)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-gen-sdk: %v\n", err)
		os.Exit(1)
	}
}
