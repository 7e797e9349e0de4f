// pf-bench figures of the input pipeline (data/).
#pragma once

namespace pf::bench {

// mnist_mlp_epoch_pipeline: a mnist_mlp epoch (600 steps of 100) reading its batches through
// IteratorGetNext (shuffle of 60,000 examples, batch, prefetch) against the same steps fed
// prepared tensors, interleaved in one run: the pipeline's overhead in percent; and
// getnext_overhead_pct, the fed path's prepared batches read through IteratorGetNext (no
// shuffle, no batching copies): the cost of the graph reading its input against a feed.
void MnistMlpEpochPipeline();
// input_pipeline: examples/s of reading Fashion-MNIST's 60,000 training examples from a TFRecord
// file of tf.Example (pf-data convert's layout, written to $PF_BENCH_TFRECORD or
// /tmp/pf_bench_input_pipeline.tfrecord when absent): shuffle (buffer 10,000), batch 100, parse
// and decode (2 threads), prefetch 2. tools/bench/compare_peers.py's input_pipeline runs the same
// tf.data pipeline on the same file. Needs protobuf (skipped=no_protobuf without).
void InputPipeline();
// image_folder: images/s of data::FromImageFolder over 2,000 JPEGs of 256x256 in two classes
// (written by EncodeJpeg to $PF_BENCH_IMAGES or /tmp/pf_bench_images when absent): decode and
// resize to 224x224 (2 threads), batch 64, prefetch 2; seed 004's input.
// tools/bench/compare_peers.py's image_folder runs Keras's image_dataset_from_directory on the
// same folder.
void ImageFolder();

}  // namespace pf::bench
