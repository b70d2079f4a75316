package pki

// Problem says why a certificate cannot be used; Reason is a CamelCase word for a
// condition/Event, Message a sentence for humans. Neither ever holds key material.
type Problem struct {
	Reason  string
	Message string
}

// Error is the message.
func (p *Problem) Error() string { return p.Message }

// The reasons of a Problem.
const (
	// ReasonMissingKey: a key of the Secret (tls.crt, tls.key, ca.crt) is absent or empty.
	ReasonMissingKey = "MissingKey"
	// ReasonBadCertificate: tls.crt or ca.crt holds no certificate, or one that does not parse.
	ReasonBadCertificate = "BadCertificate"
	// ReasonBadKey: tls.key holds no private key that can be used.
	ReasonBadKey = "BadKey"
	// ReasonKeyMismatch: tls.key is not the key of tls.crt's certificate.
	ReasonKeyMismatch = "KeyMismatch"
	// ReasonExpired: the certificate's validity ended.
	ReasonExpired = "Expired"
	// ReasonNotYetValid: the certificate's validity has not begun.
	ReasonNotYetValid = "NotYetValid"
	// ReasonUntrusted: the certificate does not chain to ca.crt.
	ReasonUntrusted = "Untrusted"
	// ReasonMissingNames: the certificate does not name every address it is reached by.
	ReasonMissingNames = "MissingNames"
	// ReasonWrongUsage: the certificate may not be used as needed (server or client
	// authentication; signing, for a CA).
	ReasonWrongUsage = "WrongUsage"
)
