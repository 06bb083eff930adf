// The program of each library's link check (headerd_library() in cmake/headerd.cmake): it does
// nothing; linking it with the whole library is the check.
int main() { return 0; }
