"""(filled in by hand)"""
