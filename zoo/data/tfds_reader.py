"""The splits of a tensorflow-datasets NLI data set, failing at once when it is not prepared and its download
host cannot be reached."""

from zoo.data.errors import DataUnavailableError
from zoo.data.layout import NO_GOLD_LABEL
from zoo.data.network import host_reachable


# tensorflow-datasets -------------------------------------------------------------------------------
def read_tfds(name, split_names, data_dir, host, offline_message, reachable=host_reachable):
    """Reads NLI splits (`premise`, `hypothesis`, `label` with -1 for no gold label) from tensorflow-datasets.

    Args:
        name: the tfds builder, e.g. `"snli"`, `"multi_nli"`.
        split_names: the tfds splits to read.
        data_dir: tfds data directory (None: its default).
        host: (host, port) the download needs; checked before downloading, so that an offline machine fails at
            once instead of after tfds's retries.
        offline_message: detail -> the message of the error raised offline.
        reachable: the host check, `host_reachable` by default.

    Returns:
        `(splits, skipped)`: {split: examples without parses, pair id `"{split}-{index}"`}, {split: {reason: n}}.

    Raises:
        DataUnavailableError: not prepared and `host` cannot be reached.
    """
    # Deferred: only the tensorflow-datasets sources need it, and its import takes 1.3-2.5 s (measured on the
    # 2-core test machine), which every file source would pay otherwise.
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=data_dir)
    if not builder.is_prepared():
        if not reachable(host):
            raise DataUnavailableError(offline_message(
                f"not prepared in {builder.data_dir} and {host[0]} cannot be reached"))
        builder.download_and_prepare()
    splits, skipped = {}, {}
    for split in split_names:
        examples, dropped = [], 0
        for i, ex in enumerate(tfds.as_numpy(builder.as_dataset(split=split))):
            label = int(ex["label"])
            if label < 0:
                dropped += 1
                continue
            examples.append({"premise": ex["premise"].decode("utf-8"), "hypothesis": ex["hypothesis"].decode("utf-8"),
                             "label": label, "pair_id": f"{split}-{i}", "premise_binary_parse": "",
                             "hypothesis_binary_parse": ""})
        splits[split] = examples
        skipped[split] = {NO_GOLD_LABEL: dropped}
    return splits, skipped
