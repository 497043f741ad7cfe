"""MShadow's TBlob and TShape: a dtype- and dimension-erased view of memory."""
