/**
 * Artifacts: the files a job's program leaves under {@code $BUILDQUEUE_ARTIFACTS}, published as the
 * job's only by the statement that ends it as succeeded (docs/architecture.md, Artifacts). The port
 * is {@link buildqueue.artifacts.ArtifactStore}; {@link
 * buildqueue.artifacts.DirectoryArtifactStore} is the local adapter, {@link
 * buildqueue.artifacts.NoArtifactStore#NONE} the store of a setup without one.
 */
package buildqueue.artifacts;
