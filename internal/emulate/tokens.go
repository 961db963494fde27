package emulate

import (
	"hash/fnv"
	"unicode/utf8"
)

// Tokens counts a text's tokens without a tokenizer: one token per four
// characters (runes), rounded up, at least one. BPE tokenizers of current
// LLMs average about four characters of English per token; the rule is
// exact for the emulator's own output, whose tokens are four characters.
func Tokens(text string) int {
	n := (utf8.RuneCountInString(text) + 3) / 4
	return max(n, 1)
}

// outputTokens is how many tokens a response has. With ignore_eos it is
// max_tokens exactly (what benchmarks ask for). Without, the emulated model
// stops at an end-of-sequence token whose position is a hash of the prompt:
// the same prompt always gets the same length, between half of max_tokens
// and max_tokens.
func outputTokens(prompt string, maxTokens int, ignoreEOS bool) int {
	if ignoreEOS || maxTokens <= 1 {
		return max(maxTokens, 1)
	}
	h := fnv.New32a()
	h.Write([]byte(prompt))
	half := (maxTokens + 1) / 2
	return half + int(h.Sum32()%uint32(maxTokens-half+1))
}

// tokenText is the text of the emulator's i-th output token: four characters.
func tokenText(i int) string {
	const words = "the model says tokens are emulated here and now, "
	start := (i * 4) % (len(words) - 4)
	return words[start : start+4]
}
