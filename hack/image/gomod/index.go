package main

// The operator image: one OCI image index over its platforms' images, and beside it in
// the layout each platform's SBOM as an OCI 1.1 artifact whose subject is that
// platform's manifest (a referrer). A registry that serves the referrers API lists the
// SBOMs under the image's digest; go-containerregistry writes the fallback tag
// (sha256-<digest>) for one that does not.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// indexSpec is what hack/image decides about a multi-platform image.
type indexSpec struct {
	Images []spec     `json:"images"`
	SBOMs  []sbomSpec `json:"sboms"`
}

type sbomSpec struct {
	Path      string `json:"path"`
	MediaType string `json:"media_type"`
	Title     string `json:"title"`
	// Image is the index (in Images) of the image the SBOM describes: its subject.
	Image int `json:"image"`
}

// assembled is what assemble-index prints: the digests a build records.
type assembled struct {
	Index  string   `json:"index"`
	Images []string `json:"images"`
	SBOMs  []string `json:"sboms"`
}

// emptyConfig is the OCI 1.1 empty descriptor an artifact without a config carries.
var emptyConfig = []byte("{}")

// assemble-index --spec SPEC --layout DIR: write the index, its images and their SBOM
// referrers as a fresh OCI layout; print their digests as JSON.
func assembleIndex(args []string) error {
	s, layoutDir, err := specAndLayout[indexSpec]("assemble-index", "JSON index spec", args)
	if err != nil {
		return err
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var out assembled
	var descriptors []v1.Descriptor
	for _, imageSpec := range s.Images {
		img, err := image(imageSpec)
		if err != nil {
			return err
		}
		descriptor, err := imageDescriptor(img)
		if err != nil {
			return err
		}
		descriptor.Platform = &v1.Platform{OS: imageSpec.OS, Architecture: imageSpec.Arch}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: descriptor})
		descriptors = append(descriptors, descriptor)
		out.Images = append(out.Images, descriptor.Digest.String())
	}
	path, err := freshLayout(layoutDir)
	if err != nil {
		return err
	}
	if err := path.AppendIndex(index); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	out.Index = digest.String()
	for _, sbom := range s.SBOMs {
		if sbom.Image < 0 || sbom.Image >= len(descriptors) {
			return fmt.Errorf("SBOM %s names image %d of %d", sbom.Path, sbom.Image, len(descriptors))
		}
		digest, err := writeArtifact(path, sbom, descriptors[sbom.Image])
		if err != nil {
			return err
		}
		out.SBOMs = append(out.SBOMs, digest.String())
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func imageDescriptor(img v1.Image) (v1.Descriptor, error) {
	digest, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mediaType, Digest: digest, Size: size}, nil
}

func blobDescriptor(content []byte, mediaType types.MediaType) (v1.Descriptor, error) {
	digest, size, err := v1.SHA256(bytes.NewReader(content))
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mediaType, Digest: digest, Size: size}, nil
}

// writeArtifact puts the SBOM and its artifact manifest into the layout and names the
// manifest in index.json beside the image index.
func writeArtifact(path layout.Path, sbom sbomSpec, subject v1.Descriptor) (v1.Hash, error) {
	content, err := os.ReadFile(sbom.Path)
	if err != nil {
		return v1.Hash{}, err
	}
	layer, err := blobDescriptor(content, types.MediaType(sbom.MediaType))
	if err != nil {
		return v1.Hash{}, err
	}
	layer.Annotations = map[string]string{"org.opencontainers.image.title": sbom.Title}
	config, err := blobDescriptor(emptyConfig, "application/vnd.oci.empty.v1+json")
	if err != nil {
		return v1.Hash{}, err
	}
	config.Data = emptyConfig
	subject.Platform = nil
	manifest, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  sbom.MediaType,
		Config:        config,
		Layers:        []v1.Descriptor{layer},
		Subject:       &subject,
	})
	if err != nil {
		return v1.Hash{}, err
	}
	descriptor, err := blobDescriptor(manifest, types.OCIManifestSchema1)
	if err != nil {
		return v1.Hash{}, err
	}
	descriptor.ArtifactType = sbom.MediaType
	for _, blob := range []struct {
		digest  v1.Hash
		content []byte
	}{{layer.Digest, content}, {config.Digest, emptyConfig}, {descriptor.Digest, manifest}} {
		if err := path.WriteBlob(blob.digest, io.NopCloser(bytes.NewReader(blob.content))); err != nil {
			return v1.Hash{}, err
		}
	}
	return descriptor.Digest, path.AppendDescriptor(descriptor)
}

// rawManifest is a manifest pushed as its bytes (an artifact go-containerregistry has
// no image type for).
type rawManifest struct {
	manifest  []byte
	mediaType types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.manifest, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mediaType, nil }

// pushIndexLayout pushes the layout's image index under ref, then its artifacts by
// digest (their subjects make them referrers); it returns the index's digest.
func pushIndexLayout(dir string, ref name.Reference, options ...remote.Option) (v1.Hash, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	manifest, err := root.IndexManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	var indexDigest v1.Hash
	var artifacts []v1.Descriptor
	for _, descriptor := range manifest.Manifests {
		switch {
		case descriptor.ArtifactType != "":
			artifacts = append(artifacts, descriptor)
		case descriptor.MediaType.IsIndex():
			if indexDigest != (v1.Hash{}) {
				return v1.Hash{}, fmt.Errorf("%s names two image indexes", dir)
			}
			index, err := root.ImageIndex(descriptor.Digest)
			if err != nil {
				return v1.Hash{}, err
			}
			if err := remote.WriteIndex(ref, index, options...); err != nil {
				return v1.Hash{}, err
			}
			indexDigest = descriptor.Digest
		default:
			return v1.Hash{}, fmt.Errorf("%s: unexpected %s in index.json", dir, descriptor.MediaType)
		}
	}
	if indexDigest == (v1.Hash{}) {
		return v1.Hash{}, fmt.Errorf("%s names no image index", dir)
	}
	path := layout.Path(dir)
	for _, descriptor := range artifacts {
		raw, err := path.Bytes(descriptor.Digest)
		if err != nil {
			return v1.Hash{}, err
		}
		var artifact v1.Manifest
		if err := json.Unmarshal(raw, &artifact); err != nil {
			return v1.Hash{}, err
		}
		for _, blob := range append([]v1.Descriptor{artifact.Config}, artifact.Layers...) {
			content, err := path.Bytes(blob.Digest)
			if err != nil {
				return v1.Hash{}, err
			}
			if err := remote.WriteLayer(ref.Context(), static.NewLayer(content, blob.MediaType), options...); err != nil {
				return v1.Hash{}, err
			}
		}
		target := ref.Context().Digest(descriptor.Digest.String())
		if err := remote.Put(target, rawManifest{raw, descriptor.MediaType}, options...); err != nil {
			return v1.Hash{}, err
		}
	}
	return indexDigest, nil
}

// isIndexLayout says whether a layout's index.json names an image index (the operator
// image) rather than one image (the Ray and Redis images).
func isIndexLayout(dir string) (bool, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return false, err
	}
	manifest, err := root.IndexManifest()
	if err != nil {
		return false, err
	}
	for _, descriptor := range manifest.Manifests {
		if descriptor.ArtifactType == "" && descriptor.MediaType.IsIndex() {
			return true, nil
		}
	}
	return false, nil
}

// pullIndex reads every platform's image of an index (checking every blob's digest).
func pullIndex(index v1.ImageIndex) error {
	manifest, err := index.IndexManifest()
	if err != nil {
		return err
	}
	for _, descriptor := range manifest.Manifests {
		img, err := index.Image(descriptor.Digest)
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
	}
	return nil
}

// referrers REF@DIGEST: print the artifacts whose subject is DIGEST, as an OCI index.
func referrers(args []string) error {
	if len(args) != 1 {
		return errors.New("referrers needs one REPOSITORY@DIGEST")
	}
	ref, err := reference(args[0])
	if err != nil {
		return err
	}
	digest, ok := ref.(name.Digest)
	if !ok {
		return fmt.Errorf("%s: referrers are looked up by digest", args[0])
	}
	index, err := remote.Referrers(digest, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return err
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(manifest)
}
