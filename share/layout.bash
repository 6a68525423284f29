# shellcheck shell=bash
# Sourced by test/helpers.bash and the bench scripts: the one way a script
# reads the SSOT's layout.

# ssot_layout: the layout of refs/amp/messages's tree here, store.h
# "Layout": 2 when it has an amp-layout file, else 1 (lib/store/layout.c).
ssot_layout() {
	if git cat-file -e refs/amp/messages:amp-layout 2> /dev/null; then echo 2; else echo 1; fi
}
