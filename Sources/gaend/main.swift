print("gaend: not yet implemented")
