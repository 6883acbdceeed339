#include "kc/status.h"
int main() { return 0; }
