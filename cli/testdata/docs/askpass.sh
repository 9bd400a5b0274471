#!/bin/sh
# SSH_ASKPASS of the docs tours: the passphrase a person types at
# ssh-keygen's prompts (docs/guard.md, "Operator workflow": a key with a
# passphrase, which ssh-keygen -Y sign then asks for). It prints one line
# whatever the prompt ($1) is.
echo 'docs tour passphrase'
