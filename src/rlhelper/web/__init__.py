"""The web chat (Gradio), its load test and its attack trials.
"""
