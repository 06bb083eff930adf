# The serving component as an installed CMake package (docs/embedding.md).
