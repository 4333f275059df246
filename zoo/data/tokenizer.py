"""The one tokenizer of the zoo: Penn-Treebank-style rules written as `tf.strings` ops.

The rules aim at the leaves of the SNLI binary parses (Stanford PTBTokenizer): punctuation is split off,
clitics are separated ("man's" -> "man 's", "don't" -> "do n't", "can't" -> "ca n't"), double quotes
become `` and '', parentheses become -LRB- / -RRB-, and a period is split off a word unless the word is an
abbreviation ("Dr.", "U.S.", "t.v."). `Tokenizer.tokenize` runs the very same TF ops eagerly, so the
Python and the in-graph tokenizers cannot diverge.
"""

import tensorflow as tf

# Abbreviations that keep their period (matched case-insensitively, whole word).
ABBREVIATIONS = (
    "mr", "mrs", "ms", "dr", "st", "mt", "rt", "jr", "sr", "ft", "vs", "etc", "inc", "co", "corp", "ltd",
    "ave", "blvd", "rd", "no", "lt", "sgt", "capt", "gen", "col", "prof", "rev", "gov", "sen", "rep", "jan",
    "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "approx", "dept", "est",
)

# (pattern, rewrite) pairs applied in order with tf.strings.regex_replace (RE2 syntax, no look-around).
_RULES = (
    (r"[\x{2018}\x{2019}\x{201B}\x{2032}]", "'"),          # curly single quotes -> '
    (r"[\x{201C}\x{201D}\x{201E}]", '"'),                  # curly double quotes -> "
    (r"\s+", " "),
    (r"^ | $", ""),
    (r'(^|[ (\[{])"', r"\1 `` "),                           # opening double quote
    (r'"', " '' "),                                         # closing double quote
    (r"\.\.\.", " ... "),
    (r"([^0-9]),", r"\1 , "),                               # comma, except between digits
    (r",([^0-9])", r" , \1"),
    (r",$", " ,"),
    (r"([^0-9]):", r"\1 : "),                               # colon, except between digits (53:11)
    (r":([^0-9])", r" : \1"),
    (r":$", " :"),
    (r"([!?;%$#@&*+=<>|~^]|--)", r" \1 "),
    (r"\(", " -LRB- "), (r"\)", " -RRB- "),
    (r"\[", " -LSB- "), (r"\]", " -RSB- "),
    (r"\{", " -LCB- "), (r"\}", " -RCB- "),
    (r"(^| )'([^ '])", r"\1` \2"),                           # opening single quote -> `
    (r"(?i)(^| )` (s|re|ve|ll|d|m)\b", r"\1'\2"),           # but not a clitic after a space ("it 's")
    (r"(?i)([a-z])(n't)\b", r"\1 \2"),                      # do n't, ca n't, wo n't
    (r"(?i)([^ '])('s|'re|'ve|'ll|'d|'m)\b", r"\1 \2"),     # man 's, they 're
    (r"(?i)( '(?:s|re|ve|ll|d|m))-", r"\1 - "),              # women 's - only
    (r"(?i)\b(can)(not)\b", r"\1 \2"),                      # can not
    (r"([^ '])'( |$)", r"\1 ' \2"),                          # dogs ' (plural possessive, closing quote)
    (r"([^.])\.( |$)", r"\1 . \2"),                          # split every word-final period ...
    (r"(?i)(^| )((?:[a-z]\.)*[a-z]|" + "|".join(ABBREVIATIONS) + r") \.( |$)",
     r"\1\2.\3"),                                           # ... then glue abbreviations back
    (r" +$", ""),
    (r"(?i)(^| )((?:[a-z]\.)+[a-z]?|" + "|".join(ABBREVIATIONS) + r")\.$", r"\1\2. ."),  # final "U.S." + .
)


class Tokenizer:
    """Penn-Treebank-style word tokenizer that runs eagerly and in-graph.

    Args:
        lowercase: lowercase the tokens (Unicode-aware); GloVe 6B is uncased.

    Example:
    ```python
    Tokenizer(lowercase=False).tokenize("The man's dog doesn't bark.")
    # ['The', 'man', "'s", 'dog', 'does', "n't", 'bark', '.']
    ```
    """

    def __init__(self, lowercase=True):
        self.lowercase = bool(lowercase)

    def tf_tokenize(self, texts):
        """Tokenizes strings in graph.

        Args:
            texts: tf.string tensor, shape `[B]` (or a scalar).

        Returns:
            `tf.RaggedTensor` of tf.string `[B, None]` (a dense 1-D tensor for a scalar input).
        """
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        for pattern, rewrite in _RULES:
            texts = tf.strings.regex_replace(texts, pattern, rewrite)
        if self.lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
        return tf.strings.split(texts)

    def tokenize_batch(self, texts, batch_size=8192):
        """Tokenizes a list of Python strings (eagerly, with `tf_tokenize`).

        Args:
            texts: iterable of str.
            batch_size: strings per TF call.

        Returns:
            list of list of str.
        """
        texts = list(texts)
        out = []
        for start in range(0, len(texts), batch_size):
            ragged = self.tf_tokenize(tf.constant(texts[start:start + batch_size], dtype=tf.string))
            out.extend([t.decode("utf-8") for t in row] for row in ragged.to_list())
        return out

    def tokenize(self, text):
        """Tokenizes one string.

        Args:
            text: str.

        Returns:
            list of str.
        """
        return self.tokenize_batch([text])[0]

    __call__ = tokenize

    def get_config(self):
        """Returns the constructor arguments as a JSON-able dict."""
        return {"lowercase": self.lowercase}

    @classmethod
    def from_config(cls, config):
        """Builds a tokenizer from `get_config()` output."""
        return cls(**config)

    def __repr__(self):
        return f"Tokenizer(lowercase={self.lowercase})"
