"""The plain-file formats of DESIGN §2–§6: manifest.json, project.md,
parsed headers, archive names, KNOWLEDGE.md and runs/*.json records."""
