// Fake REIN: everything is in rein.h.
