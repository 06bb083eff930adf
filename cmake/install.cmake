# Install rules and the Debian package of the headerd program (docs/packaging.md).
