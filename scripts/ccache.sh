# Sourced by scripts/build.sh, sanitize.sh and fuzz.sh (from the repository root): every build the
# test command makes compiles through ccache, with one cache per user that outlives the checkout, so
# a fresh clone on a machine that built headerd before compiles little (docs/testing.md, "ccache").
# Sets headerd_launcher to the CMake arguments that turn it on; empty when ccache is missing or
# HEADERD_CCACHE=0.
#
#   CCACHE_DIR       the cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/ccache, ccache's own default)
#   CCACHE_MAXSIZE   its size limit (default 5G: the normal, TSan and ASan builds of one commit took
#                    148 MB compressed from nothing, so many commits, clones and ./build fit)
headerd_launcher=()
if [ "${HEADERD_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
    export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}
    export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
    # The settings travel in the launcher itself (env VAR=... ccache), so a later `ninja -C build`
    # or an IDE's build uses them too:
    # - base_dir: paths below the checkout are hashed relative to the build directory, and
    #   nohashdir: the build directory itself is not hashed (with -g it would be), so two clones in
    #   different places share entries. Debug info and __FILE__ carry paths relative to the
    #   checkout (-ffile-prefix-map, CMakeLists.txt), so a cached object is right for every clone.
    # - compilercheck=content: a compiler is known by its bytes, not its mtime; a reinstalled GCC of
    #   the same build still hits, an upgraded one does not.
    # No sloppiness is needed: nothing uses __DATE__/__TIME__ or precompiled headers, and the unity
    #   batches include their sources by relative path (cmake/headerd.cmake), so they hit in direct
    #   mode across clones.
    headerd_launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_DIR=$CCACHE_DIR;CCACHE_MAXSIZE=$CCACHE_MAXSIZE;CCACHE_BASEDIR=$(pwd -P);CCACHE_NOHASHDIR=1;CCACHE_COMPILERCHECK=content;ccache")
fi
