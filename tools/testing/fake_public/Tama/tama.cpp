// Fake TAMA: everything is in tama.h.
