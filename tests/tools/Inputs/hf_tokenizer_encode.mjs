// Encodes each line of a JSON array of strings with Hugging Face's own
// JavaScript tokenizer (@huggingface/tokenizers, an implementation
// independent of tlm's), one line of space-separated ids per string, for
// hf-tokenizer-independent.test.
//
//   node hf_tokenizer_encode.mjs MODULE_DIR TOKENIZER.json TEXTS.json [--bos]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const [moduleDir, tokenizerPath, textsPath, bosFlag] = process.argv.slice(2);
const require = createRequire(moduleDir + "/");
const { Tokenizer } = require("@huggingface/tokenizers");
const tokenizerJson = JSON.parse(readFileSync(tokenizerPath, "utf8"));
const tokenizer = new Tokenizer(tokenizerJson, {});
for (const text of JSON.parse(readFileSync(textsPath, "utf8"))) {
  const { ids } = tokenizer.encode(text, { add_special_tokens: bosFlag === "--bos" });
  console.log(ids.join(" "));
}
