// ocitool assembles, pushes and pulls the operator's OCI image, and serves a throwaway
// registry for tests; hack/image drives it (python -m hack.image).
//
// Why Go: go-containerregistry is the library crane, ko and kaniko are built on, kept
// up to date with the OCI and registry specs (layouts, registry auth, chunked uploads,
// cross-repository mounts). Python has no equally maintained library for pushing to a
// registry, so the layer tars are made in Python and everything OCI happens here.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// spec is what hack/image decides about the image; layers are uncompressed tars.
type spec struct {
	Layers  []specLayer `json:"layers"`
	Config  v1.Config   `json:"config"`
	Created time.Time   `json:"created"`
	OS      string      `json:"os"`
	Arch    string      `json:"architecture"`
}

type specLayer struct {
	Path      string `json:"path"`
	CreatedBy string `json:"created_by"`
}

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: ocitool assemble|assemble-index|push|pull|referrers|serve ..."))
	}
	var err error
	switch os.Args[1] {
	case "assemble":
		err = assemble(os.Args[2:])
	case "assemble-index":
		err = assembleIndex(os.Args[2:])
	case "referrers":
		err = referrers(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	case "pull":
		err = pull(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ocitool:", err)
	os.Exit(1)
}

// assemble --spec SPEC --layout DIR: write the image as a fresh OCI layout; print its digest.
func assemble(args []string) error {
	s, layoutDir, err := specAndLayout[spec]("assemble", "JSON image spec", args)
	if err != nil {
		return err
	}
	img, err := image(s)
	if err != nil {
		return err
	}
	path, err := freshLayout(layoutDir)
	if err != nil {
		return err
	}
	if err := path.AppendImage(img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}

// specAndLayout reads the two flags both assemble commands take: the JSON spec (parsed
// into T) and the layout directory to write.
func specAndLayout[T any](command, specHelp string, args []string) (T, string, error) {
	var s T
	flags := flag.NewFlagSet(command, flag.ExitOnError)
	specPath := flags.String("spec", "", specHelp)
	layoutDir := flags.String("layout", "", "OCI layout directory to create")
	_ = flags.Parse(args)
	raw, err := os.ReadFile(*specPath)
	if err != nil {
		return s, "", err
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, "", fmt.Errorf("%s: %w", *specPath, err)
	}
	return s, *layoutDir, nil
}

// freshLayout replaces dir with an empty OCI layout: nothing of an earlier build's
// blobs stays in what is written next.
func freshLayout(dir string) (layout.Path, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return layout.Write(dir, empty.Index)
}

// image builds one platform's image from its spec.
func image(s spec) (v1.Image, error) {
	var err error
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range s.Layers {
		// go-containerregistry's gzip (its fastest level): the same tar gives the same
		// blob. Kept once compressed: the digest and the layout's blob would otherwise
		// each gzip the layer again (the Ray image's assembly, 32 -> 29.5 CPU-s).
		layer, err := tarball.LayerFromFile(l.Path, tarball.WithMediaType(types.OCILayer),
			tarball.WithCompressedCaching)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.Path, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History:   v1.History{CreatedBy: l.CreatedBy, Created: v1.Time{Time: s.Created}},
		})
		if err != nil {
			return nil, err
		}
	}
	img, err = mutate.Config(img, s.Config)
	if err != nil {
		return nil, err
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: s.Created})
	if err != nil {
		return nil, err
	}
	configFile, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	configFile = configFile.DeepCopy()
	configFile.OS, configFile.Architecture = s.OS, s.Arch
	return mutate.ConfigFile(img, configFile)
}

// layoutImage is the one image of a single-platform layout (the Ray and Redis images').
func layoutImage(dir string) (v1.Image, error) {
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(manifest.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d manifests, not one", dir, len(manifest.Manifests))
	}
	return index.Image(manifest.Manifests[0].Digest)
}

// Plain HTTP only to this machine's loopback: a registry anywhere else gets TLS.
func reference(ref string) (name.Reference, error) {
	var opts []name.Option
	host := strings.SplitN(ref, "/", 2)[0]
	if hostname, _, err := net.SplitHostPort(host); err == nil {
		host = hostname
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		opts = append(opts, name.Insecure)
	}
	return name.ParseReference(ref, opts...)
}

// push --layout DIR REF: push the layout's image; print REF's repository @digest.
func push(args []string) error {
	flags := flag.NewFlagSet("push", flag.ExitOnError)
	layoutDir := flags.String("layout", "", "OCI layout directory")
	_ = flags.Parse(args)
	if flags.NArg() != 1 {
		return errors.New("push needs one reference")
	}
	ref, err := reference(flags.Arg(0))
	if err != nil {
		return err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	multi, err := isIndexLayout(*layoutDir)
	if err != nil {
		return err
	}
	if multi {
		digest, err := pushIndexLayout(*layoutDir, ref, auth)
		if err != nil {
			return err
		}
		fmt.Printf("%s@%s\n", ref.Context().Name(), digest)
		return nil
	}
	img, err := layoutImage(*layoutDir)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img, auth); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref.Context().Name(), digest)
	return nil
}

// pull REF: fetch the manifest (an index: every platform's) and every blob, checking
// their digests; print the digest.
func pull(args []string) error {
	if len(args) != 1 {
		return errors.New("pull needs one reference")
	}
	ref, err := reference(args[0])
	if err != nil {
		return err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	descriptor, err := remote.Get(ref, auth)
	if err != nil {
		return err
	}
	if descriptor.MediaType.IsIndex() {
		index, err := descriptor.ImageIndex()
		if err != nil {
			return err
		}
		if err := pullIndex(index); err != nil {
			return err
		}
		fmt.Println(descriptor.Digest)
		return nil
	}
	img, err := descriptor.Image()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, layer := range layers {
		if err := readAll(layer); err != nil {
			return err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}

// readAll reads a layer's compressed blob through go-containerregistry's verifying reader.
func readAll(layer v1.Layer) error {
	blob, err := layer.Compressed()
	if err != nil {
		return err
	}
	defer blob.Close()
	_, err = io.Copy(io.Discard, blob)
	return err
}

// serve: an in-memory registry on 127.0.0.1; prints its address, serves until killed.
func serve(args []string) error {
	flags := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := flags.String("addr", "127.0.0.1:0", "address to listen on")
	_ = flags.Parse(args)
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println(listener.Addr().String())
	server := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: time.Minute}
	return server.Serve(listener)
}
