module github.com/stratum-go/stratum

go 1.26.0

require (
	github.com/gofrs/flock v0.13.2
	github.com/google/go-cmp v0.7.0
	github.com/rogpeppe/go-internal v1.16.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
