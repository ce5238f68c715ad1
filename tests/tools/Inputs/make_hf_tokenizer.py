"""Writes small Hugging Face tokenizer.json files for the tokenizer tests.

    make_hf_tokenizer.py KIND OUT.json

KIND is one of
  hand-bytelevel  a byte-level BPE whose five merges are listed below, small
                  enough that the expected ids in hf-tokenizer.test are
                  worked out by hand;
  hand-sp         the same merges in SentencePiece style (`▁`, byte fallback);
  gpt2 | smollm | llama3
                  byte-level BPE trained here on a small corpus, with GPT-2's
                  ByteLevel split, SmolLM's individual digits before it, or
                  Llama 3's Split pattern (and ignore_merges, merges as
                  pairs, a BOS template inside a Sequence post-processor);
  llama2 | metaspace
                  SentencePiece-style BPE with byte fallback, trained here,
                  with Llama 2's normalizer or the older Metaspace
                  pre-tokenizer.
The trained ones feed the comparison with an independent encoder
(compare_hf_tokenizer.mjs); the training is plain pair counting, since only
valid merges matter there, not good ones.
"""
import collections
import json
import sys

kind, out = sys.argv[1], sys.argv[2]
SP = "\u2581"

CORPUS = """Once upon a time, there was a little girl named Lily. She loved to
play outside in the sunshine. One day, she saw 3 big dogs and 12 cats near the
river! "Hello," said the dog. It's 2024 and they're happy; we'll see 1000001
stars. The quick brown fox jumps over the lazy dog. THE END... Ünïcödé café
naïve résumé: 東京 and Ελληνικά text, emoji 🙂 too.\tTabs\r\nand  double  spaces.
"""


def byte_alphabet():
    printable = [b for b in range(256)
                 if ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    table, n = {}, 256
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(n)
            n += 1
    return table


def train(words, vocab, merges, rounds):
    """Adds `rounds` merges of the most frequent adjacent pair (ties: the
    first pair seen) over `words` (lists of symbols) to vocab and merges."""
    words = [list(w) for w in words]
    for _ in range(rounds):
        counts = collections.Counter()
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] += 1
        if not counts:
            break
        (a, b), n = counts.most_common(1)[0]
        if n < 2:
            break
        merges.append((a, b))
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
        for w in words:
            i = 0
            while i + 1 < len(w):
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1


def added(content, id, special=True):
    return {"id": id, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": special}


def bytelevel(hand, flavour):
    alpha = byte_alphabet()
    vocab = {alpha[b]: b for b in range(256)}
    if hand:
        merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("i", "n"), ("in", "g")]
        for a, b in merges:
            vocab[a + b] = len(vocab)
    else:
        merges = []
        words = [" " + w for w in CORPUS.split()]
        spelled = [[alpha[c] for c in w.encode()] for w in words]
        train(spelled, vocab, merges, 120)
    specials = ["<|endoftext|>"]
    if flavour == "llama3":
        specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    added_tokens = []
    for s in specials:
        added_tokens.append(added(s, len(vocab)))
        vocab[s] = len(vocab)
    added_tokens.append(added("<tool>", len(vocab), special=False))
    vocab["<tool>"] = len(vocab)
    model = {"type": "BPE", "dropout": None, "unk_token": None,
             "continuing_subword_prefix": "", "end_of_word_suffix": "",
             "fuse_unk": False, "byte_fallback": False,
             "ignore_merges": flavour == "llama3", "vocab": vocab,
             "merges": [f"{a} {b}" for a, b in merges] if flavour != "llama3"
             else [[a, b] for a, b in merges]}
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
          "use_regex": True}
    post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
            "use_regex": True}
    if flavour == "smollm":
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, bl]}
    elif flavour == "llama3":
        pattern = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                   "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                   "\\s+(?!\\S)|\\s+")
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern},
             "behavior": "Isolated", "invert": False},
            dict(bl, use_regex=False)]}
        # As Llama 3 writes it: the template after a ByteLevel step.
        post = {"type": "Sequence", "processors": [
            dict(post, add_prefix_space=True),
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
             "special_tokens": {"<|begin_of_text|>": {
                 "id": "<|begin_of_text|>", "ids": [vocab["<|begin_of_text|>"]],
                 "tokens": ["<|begin_of_text|>"]}}}]}
    else:
        pre = bl
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": added_tokens, "normalizer": None, "pre_tokenizer": pre,
            "post_processor": post,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                        "trim_offsets": True, "use_regex": True},
            "model": model}


def sentencepiece(hand, flavour):
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    if hand:
        for c in [SP, "t", "h", "e"]:
            vocab[c] = len(vocab)
        merges = [(SP, "t"), ("h", "e"), (SP + "t", "he")]
        for a, b in merges:
            vocab[a + b] = len(vocab)
        for c in ["i", "n", "g"]:
            vocab[c] = len(vocab)
        for a, b in [("i", "n"), ("in", "g")]:
            merges.append((a, b))
            vocab[a + b] = len(vocab)
    else:
        text = SP + CORPUS.replace(" ", SP)
        # Characters seen at least twice are pieces; the rest fall back to
        # bytes (the corpus has a few of each).
        chars = collections.Counter(text)
        for c, n in sorted(chars.items()):
            if n >= 2 and c not in "\n":
                vocab.setdefault(c, len(vocab))
        words = [SP + w for w in CORPUS.split()]
        merges = []
        train([[c for c in w] for w in words if all(c in vocab for c in w)],
              vocab, merges, 120)
    model = {"type": "BPE", "dropout": None, "unk_token": "<unk>",
             "continuing_subword_prefix": None, "end_of_word_suffix": None,
             "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
             "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}
    specials = [added("<unk>", 0), added("<s>", 1), added("</s>", 2)]
    post = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    if flavour == "metaspace":
        normalizer = None
        pre = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "first",
               "split": True}
        decoder = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "first",
                   "split": True}
    else:
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SP},
            {"type": "Replace", "pattern": {"String": " "}, "content": SP}]}
        pre = None
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": specials, "normalizer": normalizer,
            "pre_tokenizer": pre, "post_processor": post, "decoder": decoder,
            "model": model}


makers = {
    "hand-bytelevel": lambda: bytelevel(True, "gpt2"),
    "hand-sp": lambda: sentencepiece(True, "llama2"),
    "gpt2": lambda: bytelevel(False, "gpt2"),
    "smollm": lambda: bytelevel(False, "smollm"),
    "llama3": lambda: bytelevel(False, "llama3"),
    "llama2": lambda: sentencepiece(False, "llama2"),
    "metaspace": lambda: sentencepiece(False, "metaspace"),
}
with open(out, "w", encoding="utf-8") as f:
    json.dump(makers[kind](), f, ensure_ascii=False, indent=1)
