#ifndef HT_VERSION_H
#define HT_VERSION_H
#define HEAPTRACE_VERSION "0.2.0"
#endif
