package strict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// DuplicateKey names the first key that a JSON object in data gives twice,
// at any depth, by its path ("spec.isl"); nil when there is none or when
// data is not valid JSON (the decoder then says what is wrong). Go's
// decoder keeps the last value of a repeated key and drops the others
// without a word, so a query that says isl twice would be answered for a
// size its author may not have meant.
func DuplicateKey(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// One frame per open object or array: the path to it and, for an
	// object, the keys seen (nil for an array).
	type frame struct {
		keys  map[string]bool
		path  string
		key   string // the object's key whose value comes next
		index int    // the array's next element
		isKey bool   // the object's next token is a key
	}
	var stack []*frame
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.keys != nil {
			return join(top.path, top.key)
		}
		return top.path + "[" + strconv.Itoa(top.index) + "]"
	}
	// afterValue moves the enclosing object or array past one value.
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.keys != nil {
			top.isKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or not JSON: the decoder reports it
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &frame{keys: map[string]bool{}, path: child(), isKey: true})
			case '[':
				stack = append(stack, &frame{path: child()})
			case '}', ']':
				stack = stack[:len(stack)-1]
				afterValue()
			}
			continue
		}
		if len(stack) > 0 {
			if top := stack[len(stack)-1]; top.keys != nil && top.isKey {
				k, _ := tok.(string)
				if top.keys[k] {
					return fmt.Errorf("%s: given twice in one object; give each key once (a JSON reader keeps only the last)", join(top.path, k))
				}
				top.keys[k], top.key, top.isKey = true, k, false
				continue
			}
		}
		afterValue()
	}
}
