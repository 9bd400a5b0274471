package sshsig

import (
	"encoding/base64"
	"fmt"
	"strings"
)

const (
	armorBegin = "-----BEGIN SSH SIGNATURE-----"
	armorEnd   = "-----END SSH SIGNATURE-----"
)

// decodeArmor extracts and decodes the single armored signature in text
// (docs/guard-signatures.md, "The signature blob"). Text outside the block is
// ignored; more than one block is refused because it is ambiguous which one was
// meant. The body, with ASCII whitespace removed, must be canonical padded
// standard base64, exactly what ssh-keygen writes.
func decodeArmor(text string) ([]byte, error) {
	begin := strings.Index(text, armorBegin)
	if begin < 0 {
		return nil, newError(ReasonMalformedArmor,
			"no \""+armorBegin+"\" line: pass the whole contents of the .sig file written by ssh-keygen -Y sign")
	}
	afterBegin := text[begin+len(armorBegin):]
	end := strings.Index(afterBegin, armorEnd)
	if end < 0 {
		return nil, newError(ReasonMalformedArmor,
			"no \""+armorEnd+"\" line after the BEGIN line: the signature was cut off; copy the whole .sig file")
	}
	body := afterBegin[:end]
	if strings.Contains(body, armorBegin) || strings.Contains(afterBegin[end+len(armorEnd):], armorBegin) {
		return nil, newError(ReasonMalformedArmor,
			"more than one SSH SIGNATURE block: pass exactly one signature")
	}
	compact := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			return -1
		}
		return r
	}, body)
	if compact == "" {
		return nil, newError(ReasonMalformedArmor, "the SSH SIGNATURE block is empty: copy the whole .sig file")
	}
	for i := 0; i < len(compact); i++ {
		if !isBase64Byte(compact[i]) {
			return nil, newError(ReasonMalformedArmor,
				fmt.Sprintf("signature body contains a character that is not base64 (%q): copy the .sig file unchanged", compact[i]))
		}
	}
	blob, err := base64.StdEncoding.Strict().DecodeString(compact)
	if err != nil {
		return nil, newError(ReasonMalformedArmor,
			fmt.Sprintf("signature body is not valid padded base64 (%v): copy the .sig file unchanged", err))
	}
	return blob, nil
}

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}
