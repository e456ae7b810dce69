#!/usr/bin/env python3
"""Writes the seed corpus of the cargo-fuzz targets (fuzz/corpus/<target>/) from the
repository's test data. Run from anywhere; rerun after changing an input format of a
target (fuzz/src/targets/). The seeds are small; libFuzzer grows its own corpus elsewhere
(fuzz/run.sh keeps it outside the clone)."""
import base64, json, os, random, struct, sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))

def write(target, name, data):
    d = os.path.join(here, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

# grammar_parse: llama.cpp's grammars, EBNF forms, a regex.
gdir = os.path.join(root, "grammar-syntax/tests/data/llama.cpp-grammars")
for name in sorted(os.listdir(gdir)):
    if name.endswith(".gbnf"):
        write("grammar_parse", name, open(os.path.join(gdir, name), "rb").read())
extra = {
    "ebnf-lookahead.ebnf": 'root ::= a.b+ "\\e" (= [0-9] | "x")\na.b ::= [^] (= "q")\n',
    "tokens.gbnf": 'root ::= <[5]> ("a" | !<[3,1]>)* "</s>"\n',
    "left-recursion.gbnf": 'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+ | "(" expr ")"\n',
    "repeats.gbnf": 'root ::= x{2} x{2,} x{,3} x{1,4} x? x* x+ "é"{3}\nx ::= [a-c\\u00e9-\\U0001F600] | [^\\n]\n',
    "regex.txt": '^[a-z]{2,5}(\\.[0-9]+)?@(foo|bar)\\d*$\n',
    "comments.gbnf": '# comment\nroot ::= "a" # trailing\n  | "b"\n\n',
}
for name, text in extra.items():
    write("grammar_parse", name, text.encode())

# json_schema: byte 0 even = schema text, odd = built value; bytes 1-2 the options.
sdir = os.path.join(root, "grammar-syntax/tests/data/json-schema-test-suite/draft2020-12")
option_pairs = [(0, 0), (1, 0), (2, 2), (3, 0), (0x04, 0), (0x08, 0x80), (0x10, 0), (0x20, 0), (0x3C, 0x81)]
i = 0
for name in ["type.json", "properties.json", "items.json", "anyOf.json", "ref.json",
             "enum.json", "pattern.json", "minLength.json", "maxItems.json",
             "additionalProperties.json", "required.json", "allOf.json", "oneOf.json",
             "format.json", "const.json", "prefixItems.json", "minimum.json", "defs.json"]:
    path = os.path.join(sdir, name)
    if not os.path.exists(path):
        continue
    groups = json.load(open(path))
    for g in groups[:2]:
        a, b = option_pairs[i % len(option_pairs)]
        i += 1
        text = json.dumps(g["schema"], ensure_ascii=False).encode()
        write("json_schema", "%s-%d" % (name[:-5], i), bytes([0, a, b]) + text)
rng = random.Random(8)
for k in range(8):
    write("json_schema", "built-%d" % k, bytes([1]) + bytes(rng.randrange(256) for _ in range(rng.randrange(16, 200))))

# matcher: the generator reads any bytes; random inputs of several lengths.
rng = random.Random(88)
for k in range(16):
    n = rng.choice([16, 40, 80, 160, 300])
    write("matcher", "random-%02d" % k, bytes(rng.randrange(256) for _ in range(n)))

# vocab_load: byte 0 = 0 tokenizer.json, 1 tiktoken, 2 GGUF.
for sub in ["byte_level", "sentencepiece"]:
    data = open(os.path.join(root, "tokenset/tests/data", sub, "tokenizer.json"), "rb").read()
    write("vocab_load", "hf-" + sub, bytes([0]) + data)
ranks = b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(
    [b"a", b"b", b"ab", b" the", b"\n", b"{\"", b"\xe6\x97", b"\xa5", b"<x>", b"0"]))
# one special token (name index 0, id kind 2: small id 10), logits width: none.
write("vocab_load", "tiktoken", bytes([1, 1, 0, 2, 10, 3]) + ranks)
write("vocab_load", "tiktoken-gap", bytes([1, 0, 2]) + ranks.replace(b" 9\n", b" 40\n"))

def gguf(kvs):
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs))
    s = lambda x: struct.pack("<Q", len(x)) + x
    for key, (kind, v) in kvs:
        out += s(key.encode())
        if kind == "str":
            out += struct.pack("<I", 8) + s(v.encode())
        elif kind == "u32":
            out += struct.pack("<II", 4, v)
        elif kind == "strs":
            out += struct.pack("<IIQ", 9, 8, len(v)) + b"".join(s(x.encode()) for x in v)
        elif kind == "i32s":
            out += struct.pack("<IIQ", 9, 5, len(v)) + b"".join(struct.pack("<i", x) for x in v)
    return out

write("vocab_load", "gguf-gpt2", bytes([2]) + gguf([
    ("general.architecture", ("str", "llama")),
    ("tokenizer.ggml.model", ("str", "gpt2")),
    ("tokenizer.ggml.tokens", ("strs", ["<|endoftext|>", "\u0120the", "\u010a", "hello", "<|im_end|>", "<think>"])),
    ("tokenizer.ggml.token_type", ("i32s", [3, 1, 1, 1, 3, 4])),
    ("tokenizer.ggml.eos_token_id", ("u32", 4)),
]))
write("vocab_load", "gguf-llama", bytes([2]) + gguf([
    ("tokenizer.ggml.model", ("str", "llama")),
    ("tokenizer.ggml.tokens", ("strs", ["<unk>", "<s>", "</s>", "<0x0A>", "\u2581the", "x", "unused"])),
    ("tokenizer.ggml.token_type", ("i32s", [2, 3, 3, 6, 1, 1, 5])),
    ("tokenizer.ggml.eos_token_id", ("u32", 2)),
]))

# structural_tag: byte 0 even = the tag's JSON text, odd = a built tag; byte 1 the default
# free-text budget (0: none, else byte - 1). Every fifth tag of the XGrammar fixture as
# text, with and without a budget, and a few built ones.
fixture = json.load(open(os.path.join(root, "tests/data/structural_tags/xgrammar.json")))
for i, case in enumerate(fixture["cases"][::5]):
    text = json.dumps(case["tag"]).encode()
    write("structural_tag", f"{case['name']}", bytes([0, 0]) + text)
    write("structural_tag", f"{case['name']}-budget", bytes([0, 2 + i % 3]) + text)
rng = random.Random(25)
for i in range(8):
    write("structural_tag", f"built-{i}", bytes([1, i % 5]) + bytes(rng.randrange(256) for _ in range(48)))
