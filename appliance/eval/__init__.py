"""``mirror eval``: measure swap quality with an independent recogniser (optional extra).

Files: ``recogniser`` (dlib, hash-checked), ``metrics`` (pure figures),
``regions`` (face oval from our landmarks), ``artefacts`` and ``seams`` (what a
person sees as wrong: stretch, gaze, shading, detail, the fill step),
``drawn`` (the mesh the swap drew), ``clips`` (video or image folder),
``evaluate`` (runs the swap and measures it), ``report`` (records, figures, JSON)
and ``contact_sheet`` (the picture a person looks at).
"""
